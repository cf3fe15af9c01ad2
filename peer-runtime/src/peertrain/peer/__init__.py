"""PeerTrain peer runtime."""
