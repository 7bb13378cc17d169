"""The parts of ``workers_ai.ray``: the job's shared rate budget, the actors, checkpoints and failed rows."""
