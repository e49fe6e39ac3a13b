"""The operators' web console at ``/ui/``: pages in the browser over the API itself.

The pages (``static/``) are plain HTML, CSS and JavaScript modules shipped in the package: no build step, no
asset from another host. They read and write through the API mounted under the console, ``/ui/api/v1/...``,
so every answer is the API's own: its policy, its masks, its validation and its errors. What the console adds
is a way to carry an identity in a browser (``cookies``): a sign-in form trades a user name and password for
the API's own token, which the browser keeps in an ``HttpOnly`` cookie valid under ``/ui/`` only, and every
write sends the token's CSRF companion in a header. ``pages`` serves the shell, the static files and the
sign-in and sign-out forms.
"""
