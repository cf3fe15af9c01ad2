"""PeerTrain aggregator service."""
