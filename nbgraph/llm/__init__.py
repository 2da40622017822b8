"""The LLM layer: messages, models (OpenAI-compatible and offline), tools, ``llm_node``.

Nothing here imports ``openai`` until an :class:`OpenAIModel` makes its first call, nor
``mcp`` until :func:`mcp_tools` asks a server for its tools.
"""

from __future__ import annotations

from ._mcp_errors import MCPServerError, MCPToolError
from .mcp import MCPTool, amcp_tools, mcp_tools
from .messages import (
    AssistantMessage,
    Message,
    MessagesState,
    SystemMessage,
    ToolCallRequest,
    ToolMessage,
    UserMessage,
    as_messages,
    to_openai,
)
from .model import (
    PRICES,
    ChatModel,
    ChatRequest,
    Completion,
    ModelError,
    Reply,
    ScriptedModel,
)
from .node import MAX_EMPTY_REPLIES, llm_node, parse_wrappers
from .openai_model import OpenAIModel
from .recorded import NotRecorded, RecordedModel, recorded
from .resolve import demo_model, resolve_model
from .tools import Tool, tool

__all__ = [
    "MAX_EMPTY_REPLIES",
    "PRICES",
    "AssistantMessage",
    "ChatModel",
    "ChatRequest",
    "Completion",
    "MCPServerError",
    "MCPTool",
    "MCPToolError",
    "Message",
    "MessagesState",
    "ModelError",
    "NotRecorded",
    "OpenAIModel",
    "RecordedModel",
    "Reply",
    "ScriptedModel",
    "SystemMessage",
    "Tool",
    "ToolCallRequest",
    "ToolMessage",
    "UserMessage",
    "amcp_tools",
    "as_messages",
    "demo_model",
    "llm_node",
    "mcp_tools",
    "parse_wrappers",
    "recorded",
    "resolve_model",
    "to_openai",
    "tool",
]
