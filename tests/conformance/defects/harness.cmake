# The harness: plugins that are slow, start helper processes, hang or crash.
