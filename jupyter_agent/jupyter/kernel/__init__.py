"""What a kernel's runs share: the ``AgentSession``, its traitlets ``AgentConfig``, the
kernel's variables as context, the MCP servers' status, the background warm-up."""
