# (IPython/core/__init__.py is empty: see ../__init__.pyi for why this stub exists)
