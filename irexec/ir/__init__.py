"""Reading IR files: the XML reader, the weights file and the checked graph."""
