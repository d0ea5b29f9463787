"""The way to the JupyterLab page and the kernel itself: the live-notebook bridge (its
requests, errors, page and status), the notebook bound to a page, the kernel's client to
itself, which cell is executing, the comm targets and the comm hubs."""
