"""Notebook runs under pytest answer their own pauses (a person clicks instead)."""

import os

# Inherited by the kernels nbval starts; the demo notebooks read it.
os.environ["NBGRAPH_AUTO_ANSWER"] = "1"
