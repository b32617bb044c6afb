"""`make bench`: the performance targets of issue 10, measured against whatever code is checked out."""
