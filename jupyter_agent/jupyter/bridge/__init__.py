"""The way to the JupyterLab page and the kernel itself: the live-notebook bridge (its
requests, errors, page and status), the notebook bound to a page, the kernel's client to
itself, which cell is executing (those three held together by ``kernel_links.py``), the comm
targets and the comm hubs, and the Protocols of what the kernel hands us (``kernel_types.py``)."""
