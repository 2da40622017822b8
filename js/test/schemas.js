// A tool's argument schema for the tests, as pydantic writes it (nbgraph.llm.tool): required
// fields, an enum, an optional (anyOf with null), a list, and a nested model behind a $ref.
export const SCHEMA = {
  $defs: {
    Addr: {
      properties: { street: { title: "Street", type: "string" }, zip: { title: "Zip", type: "integer" } },
      required: ["street", "zip"],
      title: "Addr",
      type: "object",
    },
  },
  additionalProperties: false,
  properties: {
    order: { title: "Order", type: "string" },
    amount: { title: "Amount", type: "number" },
    reason: { default: "late", enum: ["damaged", "late"], title: "Reason", type: "string" },
    notify: { default: true, title: "Notify", type: "boolean" },
    note: { anyOf: [{ type: "string" }, { type: "null" }], default: null, title: "Note" },
    count: { default: 1, title: "Count", type: "integer", minimum: 1 },
    tags: { default: [], items: { type: "string" }, title: "Tags", type: "array" },
    addr: { anyOf: [{ $ref: "#/$defs/Addr" }, { type: "null" }], default: null },
  },
  required: ["order", "amount"],
  type: "object",
};
