"""Executes every code cell of a Jupyter notebook in order, in one namespace, as a kernel would (CTest
python_notebook: the example notebook must run). Prints each cell's last expression like a notebook's output.
Exits 77 (skipped) when pandas is missing, 1 on the first cell that raises."""
import ast
import json
import os
import sys
import traceback

try:
    import pandas  # noqa: F401
except ImportError as e:
    print(f"skipped: {e} (apt-get install python3-pandas)")
    sys.exit(77)

path = sys.argv[1]
os.environ.setdefault("DDLSIM_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(path)))))
with open(path) as f:
    notebook = json.load(f)
namespace = {"__name__": "__main__"}
cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
if not cells:
    print(f"{path}: no code cells")
    sys.exit(1)
for i, cell in enumerate(cells):
    source = "".join(cell["source"])
    tree = ast.parse(source, filename=f"{path} cell {i}")
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    try:
        exec(compile(tree, f"{path} cell {i}", "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), f"{path} cell {i}", "eval"), namespace)
            if value is not None:
                print(repr(value))
    except Exception:
        traceback.print_exc()
        print(f"{path}: code cell {i} failed")
        sys.exit(1)
print(f"{path}: {len(cells)} code cells ran")
