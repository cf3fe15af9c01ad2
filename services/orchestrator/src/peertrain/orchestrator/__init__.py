"""PeerTrain's orchestrator: jobs, rounds, tasks for peers, deadlines and reassignment."""
