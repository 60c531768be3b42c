"""The app's names, as Qt and the data folders know them (pure Python, no imports).

Changing either name moves every user's runs and settings to a new folder.
"""

from __future__ import annotations

#: Qt's organization name: the first folder level under the platform's data and config roots.
ORGANIZATION = "CompileStudio"
#: Qt's application name: the second folder level, and the name shown in the window title.
APPLICATION = "Compile Studio"
