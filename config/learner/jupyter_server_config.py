"""The learner's JupyterLab (``python3 tools/course.py lab`` puts this folder on JUPYTER_CONFIG_PATH).

Chapters open unmodified. The stored notebooks carry no ``language_info.version``: it names the
Python that last ran them, and would differ from machine to machine. A kernel reports its own
version when it starts, and JupyterLab writes that into the notebook's metadata. A notebook
without the version was therefore marked modified a second after it opened, and autosave would
have rewritten a tracked file. Here the server hands each notebook out with the version of the
Python it runs on, which is the kernel's (the course's kernel is this environment's Python), so
JupyterLab finds nothing to change. On save the version is dropped again, so a saved chapter
differs from the repository only by what the learner changed.

The instructor edition (nbgrader's menus and server extensions) is switched off beside this file
(``labconfig/page_config.json``, ``jupyter_server_config.d/``); instructors run plain
``jupyter lab`` in the environment, or nbgrader's own commands.
"""

import platform

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager


def _without_version(model, **_kwargs):
    """pre_save_hook: keep the Python version out of the saved notebook."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        model["content"].get("metadata", {}).get("language_info", {}).pop("version", None)


class CourseContentsManager(AsyncLargeFileManager):
    """Hands notebooks out with the kernel's ``language_info.version`` filled in."""

    async def get(self, path, content=True, type=None, format=None, **kwargs):
        model = await super().get(path, content=content, type=type, format=format, **kwargs)
        if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
            info = model["content"].get("metadata", {}).get("language_info")
            if isinstance(info, dict) and info.get("name") == "python" and "version" not in info:
                info["version"] = platform.python_version()
        return model


c = get_config()  # noqa: F821 - provided by traitlets when Jupyter loads this file
c.ServerApp.contents_manager_class = CourseContentsManager
c.ContentsManager.pre_save_hook = _without_version
