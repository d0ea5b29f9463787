"""The seed article's tables, in the words the lessons use: the four steps of
``queryLoop()`` and its end conditions (what each end reason means)."""

from __future__ import annotations

#: The four steps of the article (``queryLoop()``), in the words the lessons use.
STEP_TITLES = {
    1: "build the request and call the model",
    2: "collect the response",
    3: "run the tools",
    4: "build the next state",
}

#: The article's table of end conditions: for each end reason, its row (condition, what the code does).
END_TABLE: dict[str, tuple[str, str]] = {
    "completed": ("The model's response has no tool_use",
                  "Stop hooks and recoveries have nothing to add: return completed. The loop "
                  "ended; that is not a promise that the task is done."),
    "max_turns": ("max_turns is set and the next turn would exceed it",
                  "After the tools ran, turn_count + 1 > max_turns: return max_turns "
                  "(max_turns=1 still runs the first tool calls)."),
    "aborted_streaming": ("The user interrupts while the model streams",
                          "Fill in a tool_result for every tool_use already emitted, "
                          "then return aborted_streaming."),
    "aborted_tools": ("The user interrupts while tools run",
                      "Cancel running tools, give each an error tool_result, return aborted_tools."),
    "model_error": ("The model call raises an error no recovery handled",
                    "yield_missing_tool_result_blocks() gives every tool_use of the turn an "
                    "error result, then return model_error."),
    "stop_hook_prevented": ("A Stop hook prevents continuing",
                            "Return stop_hook_prevented."),
    "hook_stopped": ("A PreToolUse/PostToolUse hook stops the run",
                     "Return hook_stopped (in the tool phase)."),
    "prompt_too_long": ("The context is over the model's limit and compaction cannot save it",
                        "Return prompt_too_long."),
}
