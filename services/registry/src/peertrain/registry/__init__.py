"""PeerTrain registry service: peers, device specs, heartbeats, liveness, selection."""
