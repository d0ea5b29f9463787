"""``Read {file_path, offset?, limit?}``: text with line numbers, images, notebooks."""

from __future__ import annotations

import base64
import difflib
import os

from pydantic import Field

from ..notebook import NotebookError, is_notebook_path, not_found_message, open_notebook
from ..notebook.render import render_notebook
from ..notebook.session import tool_session
from ..loop.tool import FileReadRecord, PreparedCall, ToolContext, ToolError, ToolInput, ToolOutput
from ..loop.wire import JSONObject
from .common import PathTool
from ..files.filestat import stat_file
from .imageinfo import describe_image
from .fileio import MAX_TEXT_BYTES, content_hash, decode_bytes, looks_binary, record_read
from .saved_text import traceback_saver
from .pdf import PAGES_DESCRIPTION, READ_USAGE_LINE, check_pages_use, is_pdf_path, read_pdf

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
#: About 25k tokens: a page never exceeds this many characters.
MAX_OUTPUT_CHARS = 100_000
MAX_IMAGE_BYTES = 3_750_000  # 5 MB once base64-encoded: the API's limit
IMAGE_SIGNATURES = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}
IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".gif", ".webp"}
BINARY_EXTENSIONS = set(
    ".pdf .zip .gz .tgz .bz2 .xz .7z .rar .tar .exe .dll .so .dylib .o .a .lib .pyc .pyo .class .jar "
    ".whl .egg .mp3 .mp4 .m4a .mov .avi .mkv .wav .flac .ogg .webm .bmp .ico .tif .tiff .psd .heic "
    ".sqlite .sqlite3 .db .parquet .feather .arrow .npy .npz .pkl .pickle .h5 .hdf5 .pt .pth .onnx "
    ".safetensors .bin .woff .woff2 .ttf .otf .eot .doc .docx .xls .xlsx .ppt .pptx".split()
)


class ReadInput(ToolInput):
    file_path: str = Field(description="The absolute path to the file to read")
    offset: int | None = Field(
        default=None, ge=0,
        description="The line number to start reading from (for a notebook: the 0-based index of the first "
                    "cell). Only provide if the file is too large to read at once",
    )
    limit: int | None = Field(
        default=None, gt=0,
        description="The number of lines to read (for a notebook: of cells). Only provide if the file is too "
                    "large to read at once.",
    )
    pages: str | None = Field(default=None, description=PAGES_DESCRIPTION)
    outputs: bool | None = Field(default=None, description="Notebooks only: false leaves cell outputs out "
                                                           "(default true)")
    images: bool | None = Field(default=None, description="Notebooks only: false leaves images out of the outputs "
                                                          "(default true)")


class Read(PathTool[ReadInput]):
    name = "Read"
    Input = ReadInput
    read_only = True
    max_result_size_chars = 400_000  # Read bounds itself; never persist a Read to a file to be Read
    description = (
        "Reads a file from the local filesystem. You can access any file directly by using this tool.\n"
        "Assume this tool is able to read all files on the machine. If the User provides a path to a file "
        "assume that path is valid. It is okay to read a file that does not exist; an error will be returned.\n\n"
        "Usage:\n"
        "- The file_path parameter must be an absolute path, not a relative path\n"
        f"- By default, it reads up to {DEFAULT_LIMIT} lines starting from the beginning of the file\n"
        "- You can optionally specify a line offset and limit (especially handy for long files), but it's "
        "recommended to read the whole file by not providing these parameters\n"
        f"- Any lines longer than {MAX_LINE_CHARS} characters will be truncated\n"
        "- Results are returned using cat -n format, with line numbers starting at 1\n"
        "- This tool allows reading images (PNG, JPG, GIF, WEBP): their contents are presented visually\n"
        f"{READ_USAGE_LINE}\n"
        "- This tool reads Jupyter notebooks (.ipynb files) and returns all cells with their outputs, "
        "combining code, text, and visualizations; offset/limit then count cells. Each cell is "
        '<cell id="ID" type="code" execution_count="N">SOURCE<output>...</output></cell>; stale="true" marks '
        'outputs older than the source, never_run="true" a code cell that has not run; the <notebook> element '
        "says whether its kernel is running and the folder its code runs in\n"
        "- This tool can only read files, not directories. To list files, use Glob\n"
        "- You must Read a file (all of it) before you Write or Edit it"
    )

    async def validate_input(self, input: ReadInput, context: ToolContext) -> str | None:
        return self.validate_path_text(input, context)

    def reread_input(self, input: JSONObject) -> JSONObject | None:
        """The same read again (the same page of a long file): after a compaction the
        model sees the file as it is now, and Edit/Write may follow without a new Read."""
        return dict(input) if isinstance(input.get("file_path"), str) else None

    async def call(self, input: ReadInput, context: ToolContext, prepared: PreparedCall) -> ToolOutput:
        path = self.resolve(input, context).real
        check_pages_use(path, input.pages)
        if is_notebook_path(path):
            registered = str(path) in tool_session(context).notebook_documents
            if registered or path.is_file():
                try:
                    return await self._read_notebook(path, input, context)
                except NotebookError as exc:
                    if registered:
                        raise
                    broken = str(exc)  # show the raw text so the model can repair it
                    output = self._read_file(path, input, context)  # with its size caps
                    return ToolOutput(f"[This .ipynb is not a readable notebook: {broken} "
                                      f"Shown as text.]\n{output.content}")
        return self._read_file(path, input, context)

    def _read_file(self, path, input: ReadInput, context: ToolContext) -> ToolOutput:
        st = stat_file(path, missing=lambda: _missing_message(path, context))
        if path.suffix.lower() in IMAGE_EXTENSIONS:
            return self._read_image(path, st, context)
        if is_pdf_path(path):
            return read_pdf(path, st.st_size, st.st_mtime_ns, input.pages, context)
        if path.suffix.lower() in BINARY_EXTENSIONS:
            raise ToolError(f"{input.file_path} is a binary file ({path.suffix} file, {st.st_size:,} bytes). "
                            "Read shows text files, images and notebooks only.")
        if st.st_size > MAX_TEXT_BYTES:
            raise ToolError(f"{input.file_path} is {st.st_size:,} bytes, too large to read. "
                            "Use Grep to find the part you need.")
        return self._read_text(path, input, context)

    def _read_text(self, path, input: ReadInput, context: ToolContext) -> ToolOutput:
        raw = path.read_bytes()
        mtime = os.stat(path).st_mtime_ns
        if looks_binary(raw):
            raise ToolError(f"{input.file_path} is a binary file ({len(raw):,} bytes). "
                            "Read shows text files, images and notebooks only.")
        digest = content_hash(raw)
        text, encoding, _bom, invalid = decode_bytes(raw)
        if not text:
            record_read(context, path, digest, mtime)
            return ToolOutput("<system-reminder>Warning: the file exists but the contents are empty."
                              "</system-reminder>")
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        total = len(lines)
        start = max(input.offset or 1, 1)
        if start > total:
            return ToolOutput(f"<system-reminder>Warning: the file exists but is shorter than the provided "
                              f"offset ({start}). The file has {total} lines.</system-reminder>")
        limit = input.limit or DEFAULT_LIMIT
        out: list[str] = []
        used, last = 0, start - 1
        for number in range(start, min(total, start + limit - 1) + 1):
            line = lines[number - 1].removesuffix("\r")
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + f"... [line truncated: {len(line) - MAX_LINE_CHARS:,} more characters]"
            if invalid:
                line = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            entry = f"{number}\t{line}"
            if used + len(entry) > MAX_OUTPUT_CHARS and out:
                break
            out.append(entry)
            used += len(entry) + 1
            last = number
        record_read(context, path, digest, mtime, lines=(start, last), total_lines=total)
        notes = []
        if last < total or start > 1:
            notes.append(f"[Showing lines {start}-{last} of {total}."
                         + (f" To read more, call Read with offset={last + 1}.]" if last < total else "]"))
        if invalid:
            notes.append(f"[This file is not valid UTF-8: {invalid} byte(s) are shown as \ufffd. "
                         "Edits keep those bytes as they are.]")
        elif encoding != "utf-8":
            notes.append(f"[Encoding: {encoding}; edits keep it.]")
        return ToolOutput("\n".join(out) + ("\n\n" + "\n".join(notes) if notes else ""))

    def _read_image(self, path, st, context: ToolContext) -> ToolOutput:
        if st.st_size > MAX_IMAGE_BYTES:
            raise ToolError(f"{path.name} is {st.st_size:,} bytes; images over {MAX_IMAGE_BYTES:,} bytes "
                            "cannot be sent to the model. Make a smaller copy and read that.")
        data = path.read_bytes()
        media_type = next((m for sig, m in IMAGE_SIGNATURES.items() if data.startswith(sig)), None)
        if media_type is None and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
            media_type = "image/webp"
        if media_type is None:
            raise ToolError(f"{path.name} has an image extension but is not a PNG, JPEG, GIF or WebP image.")
        context.read_file_state[str(path)] = FileReadRecord(str(path), st.st_mtime_ns, content_hash(data))
        return ToolOutput([{"type": "text", "text": describe_image(path.name, data, media_type)},
                           {"type": "image", "source": {"type": "base64", "media_type": media_type,
                                                        "data": base64.b64encode(data).decode("ascii")}}])

    async def _read_notebook(self, path, input: ReadInput, context: ToolContext) -> ToolOutput:
        doc = open_notebook(path, tool_session(context))
        snapshot = await doc.snapshot()
        page = render_notebook(snapshot, offset=input.offset or 0, limit=input.limit, save=traceback_saver(context),
                               kernel=await doc.kernel_info(), outputs=input.outputs is not False,
                               images=input.images is not False)
        context.read_file_state[str(path)] = FileReadRecord(
            path=str(path), mtime_ns=snapshot.mtime_ns, content_hash=snapshot.version, partial=page.partial)
        problem = await doc.validation_problem()
        if problem:
            warning = (f"\n[Warning: this notebook does not pass nbformat validation ({problem}). NotebookEdit "
                       "refuses to edit it until that is fixed, e.g. by rewriting the file with Write.]")
            content = page.content
            if isinstance(content, str):
                content += warning
            else:
                content = [*content, {"type": "text", "text": warning.strip()}]
            return ToolOutput(content)
        return ToolOutput(page.content)


def _missing_message(path, context: ToolContext) -> str:
    elsewhere = not_found_message(path, tool_session(context)) if is_notebook_path(path) else None
    if elsewhere is not None:  # a notebook page is open: say which path reaches it
        return elsewhere + f" (Current working directory: {context.cwd})"
    message = f"File does not exist: {path}."
    try:
        siblings = os.listdir(path.parent)
    except OSError:
        siblings = []
    close = difflib.get_close_matches(path.name, siblings, n=1, cutoff=0.75)
    if close:
        message += f" Did you mean {path.parent / close[0]}?"
    return message + f" (Current working directory: {context.cwd})"
