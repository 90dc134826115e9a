"""Execution environments: one process per environment running a handler.

Modules named ``parent_*`` run in the harness (starting, driving, freezing environments);
modules named ``child_*`` run inside the environment's own process (the host that imports the
handler, the zygote that forks environments, the guards). ``handlers`` resolves handler
references; ``capacity`` estimates what this machine can hold.

Kept cheap to import: each environment imports ``child_host`` by module name.
"""
