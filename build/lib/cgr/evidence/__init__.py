"""pool -> the facts each choice offers the reader: relevance order, de-duplication."""
