"""Reading uploads safely: the streamed form, format detection, ZIP checks, bounded
decompression, CSV text."""
