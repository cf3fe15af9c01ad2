"""PeerTrain registry service."""
