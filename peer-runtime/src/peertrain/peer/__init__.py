"""PeerTrain peer runtime: the program a volunteer runs (listener + worker)."""
