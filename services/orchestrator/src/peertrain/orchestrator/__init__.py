"""PeerTrain orchestrator service."""
