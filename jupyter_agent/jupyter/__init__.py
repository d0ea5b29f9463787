"""The Jupyter front of the agent, in rooms by responsibility (lowest first):

- ``bridge/``: the live-notebook bridge to the JupyterLab page, the kernel's client to
  itself, the execution tracker, the comm targets and hubs;
- ``widgets/``: the run handle (``AgentRun``) and the widgets it displays;
- ``persistence/``: the saved conversation and ``%agent resume``;
- ``kernel/``: the ``AgentSession`` a kernel's runs share, ``AgentConfig``, the warm-up;
- ``outside/``: an outside agent's MCP calls, carried out here;
- ``panel/``: the side panel's comm and state;
- ``magic/``: ``%load_ext``, ``%%agent`` and ``%agent``, the chat widget, and
  ``KernelServices``, the one owner of what is kernel-wide (the session holds it).

``tests/test_package_graph.py`` says which room may import which. What is shown comes from
``jupyter_agent.view``, which the command line shares. Importing this package imports none
of them.
"""
