"""Repository tools that are not part of the product: the tree's no-diary check
(``check_tree``, run by ``nox -s lint``) and the docs site's hooks (``docs_hooks``)."""
