"""PeerTrain auth service."""
