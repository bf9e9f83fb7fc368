// Primitive value nodes (comfy_extras/nodes_primitive.py).
import { booleanInput, floatInput, intInput, stringInput, type NodeDefinition } from "../node-spec.ts";

// sys.maxsize, as ComfyUI declares the bounds (JSON numbers lose the last digits, as in any JS client).
// biome-ignore lint/correctness/noPrecisionLoss: the literal is ComfyUI's, kept as it declares it.
const MAXSIZE = 9223372036854775807;

function primitive(name: string, displayName: string, type: string, spec: NodeDefinition["input"]["required"][string]): NodeDefinition {
  return {
    name,
    display_name: displayName,
    category: "utils/primitive",
    description: "",
    python_module: "comfy_extras.nodes_primitive",
    input: { required: { value: spec } },
    output: [type],
    output_node: false,
    run(_ctx, inputs) {
      return { result: [inputs.value] };
    },
  };
}

/** PrimitiveString: passes its value on. */
export const PrimitiveString = primitive("PrimitiveString", "String", "STRING", stringInput({ multiline: false }));
/** PrimitiveInt: passes its value on. */
export const PrimitiveInt = primitive("PrimitiveInt", "Int", "INT", intInput({ min: -MAXSIZE, max: MAXSIZE, control_after_generate: true }));
/** PrimitiveFloat: passes its value on. */
export const PrimitiveFloat = primitive("PrimitiveFloat", "Float", "FLOAT", floatInput({ min: -MAXSIZE, max: MAXSIZE, step: 0.1 }));
/** PrimitiveBoolean: passes its value on. */
export const PrimitiveBoolean = primitive("PrimitiveBoolean", "Boolean", "BOOLEAN", booleanInput({}));

/** The primitive family. */
export const primitiveNodes: readonly NodeDefinition[] = [PrimitiveString, PrimitiveInt, PrimitiveFloat, PrimitiveBoolean];
