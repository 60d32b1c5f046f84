"""cgr: chain-guided retrieval and multi-hop question answering."""

__version__ = "0.1.0"
