"""Reading uploads safely: format detection, ZIP checks, bounded decompression, CSV text."""
