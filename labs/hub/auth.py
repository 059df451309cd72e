"""Sign-in for a class: NativeAuthenticator with an account for each person of the class list.

`labs hub` gives each person a one-time password (``state/passwords.csv``, root only, for the instructor to hand
out); when the hub starts, :class:`ClassAuthenticator` creates the NativeAuthenticator account of each person who
has none yet, with that password, already authorized. A person changes it at ``/hub/change-password``; someone
not on the list can sign up at ``/hub/signup`` only if the instructor opens sign-up, and then waits for the
instructor's approval at ``/hub/authorize`` (NativeAuthenticator's own pages). Passwords are stored as bcrypt
hashes in the hub's database, as NativeAuthenticator stores them.

NativeAuthenticator 1.3.0's login page predates JupyterHub 6: its handler times the sign-in with the handler's
``statsd`` (gone in JupyterHub 6) and renders its page without the keywords JupyterHub 6 passes (``sync``).
:class:`ClassLoginHandler` is the same page with both bridged; everything else is NativeAuthenticator's own.
"""

from __future__ import annotations

import csv
from pathlib import Path

import bcrypt
from nativeauthenticator import NativeAuthenticator
from nativeauthenticator.handlers import LoginHandler as NativeLoginHandler
from nativeauthenticator.orm import UserInfo
from tornado.escape import url_escape
from tornado.httputil import url_concat
from traitlets import Unicode


class _Timer:
    """What NativeAuthenticator's login handler asks of JupyterHub's (removed) statsd timer: nothing."""

    def start(self) -> _Timer:
        return self

    def stop(self, send: bool = True) -> None:
        pass


class _NoStatsd:
    def timer(self, name: str) -> _Timer:
        return _Timer()


class ClassLoginHandler(NativeLoginHandler):
    """NativeAuthenticator's login page on JupyterHub 6 (see the module docstring)."""

    statsd = _NoStatsd()

    def _render(self, login_error=None, username=None, **kwargs):
        """The sign-in page (NativeAuthenticator's template and values); ``sync`` as JupyterHub 6 asks, when it
        renders a failed sign-in through its error page."""
        return self.render_template(
            "native-login.html", sync=bool(kwargs.get("sync")),
            next=url_escape(self.get_argument("next", default="")), username=username, login_error=login_error,
            custom_html=self.authenticator.custom_html, login_url=self.settings["login_url"],
            enable_signup=self.authenticator.enable_signup, two_factor_auth=self.authenticator.allow_2fa,
            authenticator_login_url=url_concat(self.authenticator.login_url(self.hub.base_url),
                                               {"next": self.get_argument("next", "")}))


class ClassAuthenticator(NativeAuthenticator):
    """NativeAuthenticator whose accounts come from the class list's one-time passwords."""

    accounts_file = Unicode("", help="CSV name,password,email: the accounts to create when missing").tag(
        config=True)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.create_class_accounts()

    def get_handlers(self, app) -> list[tuple]:
        """NativeAuthenticator's pages, the login page bridged to JupyterHub 6."""
        return [(path, ClassLoginHandler if handler is NativeLoginHandler else handler)
                for path, handler in super().get_handlers(app)]

    def create_class_accounts(self) -> list[str]:
        """An authorized account for each person of ``accounts_file`` who has none; returns those created."""
        path = Path(self.accounts_file)
        if not self.accounts_file or not path.is_file():
            return []
        with path.open(newline="", encoding="utf-8") as handle:
            rows = [row for row in csv.reader(handle) if len(row) >= 2 and row[0] != "name"]
        created = []
        for name, password, *rest in rows:
            if UserInfo.find(self.db, name) is not None:
                continue
            hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt())
            self.db.add(UserInfo(username=name, password=hashed, is_authorized=True, email=(rest or [""])[0] or None))
            created.append(name)
        if created:
            self.db.commit()
            self.log.info("class accounts created: %s", ", ".join(created))
        return created
