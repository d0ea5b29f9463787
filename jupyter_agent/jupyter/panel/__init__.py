"""The side panel's kernel half: its comm, the runs it shows, their JSON shapes."""
