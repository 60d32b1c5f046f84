"""Reasoning chains: semantic graph from AMRs, bounded chain search, export."""
