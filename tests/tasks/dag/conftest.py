"""The DAG synthesizer tests run on the freight-desk environment: `freight_env`, `freight_dir`,
`freight_spec`, `freight_bundle` and `freight_sandbox` come from tests/fixtures (built once, cached).
The seed is a handful of MCP tools for a freight desk (consignments, carriers, freight bills); the
knowledge base of the logistics domain fills out the rest, so the environment has the paper's shape
(many entities and tools, rules, lifecycles) while building in a few seconds."""
