"""Search over schedules and candidates: the evolutionary search, the cost model, rewards, evaluation of submissions, the RL environment and the dataset export."""
