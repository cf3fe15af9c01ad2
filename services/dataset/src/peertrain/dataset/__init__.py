"""PeerTrain dataset service."""
