"""PeerTrain shared core."""
