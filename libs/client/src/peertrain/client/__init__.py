"""PeerTrain client SDK and CLI."""
