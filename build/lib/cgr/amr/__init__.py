"""AMR parsing behind one interface: sentences in, PENMAN graphs out (amrlib or embedded)."""
