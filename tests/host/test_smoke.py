def test_env_factory_gives_nodes_addresses(env):
    cluster = env.create(nodes_kwargs=[{"roles": ["controller"]}, {"roles": ["compute"]}])
    controller, compute = (env.get_node(n["id"]) for n in env.nodes)
    names = {d["name"] for d in controller["network_data"]}
    assert {"management", "public", "storage", "fuelweb_admin"} <= names
    assert "public" not in {d["name"] for d in compute["network_data"]}
    assert controller["cluster"] == cluster["id"]
