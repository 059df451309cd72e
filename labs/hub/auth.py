"""Sign-in for a class: NativeAuthenticator with an account for each person of the class list.

`labs hub` gives each person a one-time password (``state/passwords.csv``, root only, for the instructor to hand
out); when the hub starts, :class:`ClassAuthenticator` creates the NativeAuthenticator account of each person who
has none yet, with that password, already authorized. The password is good for one thing only: a sign-in with it
lands on ``/hub/change-password``, and the hub starts no server for that person until they have chosen their
own (:meth:`ClassAuthenticator.pre_spawn_start`); after that the one-time password no longer signs in. Someone
not on the list may sign up at ``/hub/signup`` but never signs in (``allowed_users`` is the class list, and
nobody holds the scope NativeAuthenticator's ``/hub/authorize`` needs). Passwords are stored as bcrypt
hashes in the hub's database, as NativeAuthenticator stores them.

NativeAuthenticator 1.3.0's login page predates JupyterHub 6: its handler times the sign-in with the handler's
``statsd`` (gone in JupyterHub 6) and renders its page without the keywords JupyterHub 6 passes (``sync``).
:class:`ClassLoginHandler` is the same page with both bridged and every bcrypt check in a thread (each takes
about 0.25 s of CPU; on the event loop, a burst of wrong passwords would stall the hub for everyone), with
NativeAuthenticator's lockout on (after ``allowed_failed_logins`` wrong passwords in a row, a name is refused for
``seconds_before_next_try`` s), and :class:`ClassChangePasswordHandler` fills in the
XSRF token its form posts (a template value JupyterHub 6 no longer passes); everything else is NativeAuthenticator's
own.
"""

from __future__ import annotations

import asyncio
import csv
import hmac
from pathlib import Path

import bcrypt
from jupyterhub.utils import url_path_join
from nativeauthenticator import NativeAuthenticator
from nativeauthenticator.handlers import ChangePasswordHandler as NativeChangePasswordHandler
from nativeauthenticator.handlers import LoginHandler as NativeLoginHandler
from nativeauthenticator.orm import UserInfo
from tornado import web
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
    """NativeAuthenticator's login page on JupyterHub 6 (see the module docstring); a sign-in with a one-time
    password goes on to the page that changes it."""

    statsd = _NoStatsd()

    def get_next_url(self, user=None, default=None):
        if user is not None and self.authenticator.must_change(user.name):
            return url_path_join(self.hub.base_url, "change-password")
        return super().get_next_url(user, default)

    async def post(self):
        """NativeAuthenticator's sign-in, its password checks off the event loop: on a failure its own handler
        checks the password again, on the loop, to say "not authorized yet"; here only for an account that is
        not authorized, in a thread."""
        data = {arg: self.get_argument(arg, strip=False) for arg in self.request.arguments}
        user = await self.login_user(data)
        if user:
            self._jupyterhub_user = user
            self.redirect(self.get_next_url(user))
            return
        username = data.get("username", "")
        error = "Invalid username or password."
        info = self.authenticator.get_user(username)
        if (
            info is not None
            and not info.is_authorized
            and await asyncio.get_running_loop().run_in_executor(
                None, bcrypt.checkpw, data.get("password", "").encode(), info.password
            )
        ):
            error = f"User {username} has not been authorized by an administrator yet."
        self.finish(await self._render(login_error=error, username=username))

    def _render(self, login_error=None, username=None, **kwargs):
        """The sign-in page (NativeAuthenticator's template and values); ``sync`` as JupyterHub 6 asks, when it
        renders a failed sign-in through its error page."""
        return self.render_template(
            "native-login.html",
            sync=bool(kwargs.get("sync")),
            next=url_escape(self.get_argument("next", default="")),
            username=username,
            login_error=login_error,
            custom_html=self.authenticator.custom_html,
            login_url=self.settings["login_url"],
            enable_signup=self.authenticator.enable_signup,
            two_factor_auth=self.authenticator.allow_2fa,
            authenticator_login_url=url_concat(
                self.authenticator.login_url(self.hub.base_url), {"next": self.get_argument("next", "")}
            ),
        )


class ClassChangePasswordHandler(NativeChangePasswordHandler):
    """NativeAuthenticator's change-password page with the XSRF token in its form: its template reads ``xsrf``,
    which JupyterHub 6 does not pass, so a browser's post of the form would be refused."""

    def render_template(self, name, sync=False, **ns):
        return super().render_template(name, sync=sync, xsrf=self.xsrf_token.decode("ascii"), **ns)

    @web.authenticated
    async def post(self):
        """NativeAuthenticator's change of one's own password, its two bcrypt steps (the old password checked, the
        new one hashed) in a thread, so that posting the form again and again does not stall the hub."""
        user = await self.get_current_user()
        old, new, confirmation = (
            self.get_body_argument(name, strip=False)
            for name in ("old_password", "new_password", "new_password_confirmation")
        )
        info = self.authenticator.get_user(user.name)
        loop = asyncio.get_running_loop()
        alert, message = "alert-danger", "Your current password was incorrect. Please try again."
        if info is not None and await loop.run_in_executor(None, bcrypt.checkpw, old.encode(), info.password):
            message = "Your new password didn't match the confirmation. Please try again."
            if new == confirmation:
                message = (
                    f"Something went wrong!\nBe sure your new password has at least "
                    f"{self.authenticator.minimum_password_length} characters and is not too common."
                )
                if self.authenticator.acceptable(user.name, new):
                    hashed = await loop.run_in_executor(None, bcrypt.hashpw, new.encode(), bcrypt.gensalt())
                    self.authenticator.store_password(user.name, hashed)
                    alert, message = "alert-success", "Your password has been changed successfully!"
        self.finish(
            await self.render_template(
                "change-password.html", user_name=user.name, result_message=message, alert=alert
            )
        )


BRIDGED = {NativeLoginHandler: ClassLoginHandler, NativeChangePasswordHandler: ClassChangePasswordHandler}


class ClassAuthenticator(NativeAuthenticator):
    """NativeAuthenticator whose accounts come from the class list's one-time passwords."""

    accounts_file = Unicode("", help="CSV name,password,email: the accounts to create when missing").tag(
        config=True
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.one_time: dict[str, str] = {}  # name -> the one-time password of accounts_file
        self.still_one_time: dict[
            str, bool
        ] = {}  # name -> their password is still the one-time one, as last seen
        self.create_class_accounts()

    async def authenticate(self, handler, data):
        """NativeAuthenticator's check (its lockout: after ``allowed_failed_logins`` wrong passwords in a row, none
        is tried for ``seconds_before_next_try`` s), with bcrypt in a thread: a check takes about 0.25 s of CPU,
        and the hub answers everyone else meanwhile. A success notes whether the password was the one-time one."""
        name = self.normalize_username(data["username"])
        password = data["password"]
        user = self.get_user(name)
        if not user or (self.allowed_failed_logins and self.is_blocked(name)):
            return None
        matches = await asyncio.get_running_loop().run_in_executor(
            None, bcrypt.checkpw, password.encode(), user.password
        )
        if not (
            matches and user.is_authorized and (not user.has_2fa or user.is_valid_token(data.get("2fa")))
        ):
            self.add_login_attempt(name)
            return None
        self.successful_login(name)
        self.still_one_time[name] = name in self.one_time and hmac.compare_digest(
            password.encode(), self.one_time[name].encode()
        )
        return name

    def change_password(self, username, new_password):
        """NativeAuthenticator's change (an admin's page for another user), on the event loop; a person's own
        change goes through :class:`ClassChangePasswordHandler`, off it."""
        if not self.acceptable(username, new_password):
            return None
        self.store_password(username, bcrypt.hashpw(new_password.encode(), bcrypt.gensalt()))
        return True

    def acceptable(self, username: str, new_password: str) -> bool:
        """A new password for ``username``: strong enough, and never their one-time password."""
        return (
            self.get_user(username) is not None
            and self.is_password_strong(new_password)
            and new_password != self.one_time.get(username)
        )

    def store_password(self, username: str, hashed: bytes) -> None:
        """Store the bcrypt hash of ``username``'s new password; the one-time password is dead from now on."""
        self.get_user(username).password = hashed
        self.db.commit()
        self.still_one_time[username] = False

    def must_change(self, name: str) -> bool:
        """Whether ``name`` still signs in with their one-time password (checked against the stored hash when
        this hub has not seen them sign in: a session from before a restart)."""
        if name not in self.one_time:
            return False
        if name not in self.still_one_time:
            info = UserInfo.find(self.db, name)
            self.still_one_time[name] = info is not None and bcrypt.checkpw(
                self.one_time[name].encode(), info.password
            )
        return self.still_one_time[name]

    def pre_spawn_start(self, user, spawner) -> None:
        """No server for someone whose password is still the one-time one."""
        if self.must_change(user.name):
            why = (
                f"{user.name}: choose your own password first, at /hub/change-password "
                "(the one-time password only lets you do that)"
            )
            refused = web.HTTPError(403, why)
            refused.jupyterhub_message = why  # type: ignore[attr-defined]  # shown instead of "Failed to start"
            raise refused

    def get_handlers(self, app) -> list[tuple]:
        """NativeAuthenticator's pages, the login and change-password pages bridged to JupyterHub 6."""
        return [(path, BRIDGED.get(handler, handler)) for path, handler in super().get_handlers(app)]

    def create_class_accounts(self) -> list[str]:
        """An authorized account for each person of ``accounts_file`` who has none; returns those created."""
        path = Path(self.accounts_file)
        if not self.accounts_file or not path.is_file():
            return []
        with path.open(newline="", encoding="utf-8") as handle:
            rows = [row for row in csv.reader(handle) if len(row) >= 2 and row[0] != "name"]
        self.one_time = {row[0]: row[1] for row in rows}
        created = []
        for name, password, *rest in rows:
            if UserInfo.find(self.db, name) is not None:
                continue
            hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt())
            self.db.add(
                UserInfo(username=name, password=hashed, is_authorized=True, email=(rest or [""])[0] or None)
            )
            created.append(name)
        if created:
            self.db.commit()
            self.log.info("class accounts created: %s", ", ".join(created))
        return created
