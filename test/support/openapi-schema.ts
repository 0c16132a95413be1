/**
 * A validator for the part of OpenAPI 3's schema dialect that the OpenAI chat-completion request
 * schemas use (type, nullable, enum, properties, required, additionalProperties, items,
 * min/maxItems, maxLength, minimum/maximum, allOf, anyOf, oneOf, $ref). Keywords that only annotate
 * (format, default, discriminator) are ignored. It returns every violation with its path, so a
 * test can show why a body is not a valid request, and so it can be seen to fail.
 */

type Schema = Readonly<Record<string, unknown>>;

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function typeOk(type: string, value: unknown): boolean {
  switch (type) {
    case "object":
      return isRecord(value);
    case "array":
      return Array.isArray(value);
    case "string":
      return typeof value === "string";
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "number":
      return typeof value === "number";
    case "boolean":
      return typeof value === "boolean";
    case "null":
      return value === null;
    default:
      return false;
  }
}

export function validateAgainst(schemas: Readonly<Record<string, unknown>>, root: string, value: unknown): string[] {
  const errors: string[] = [];
  const resolve = (schema: Schema): Schema => {
    const ref = schema["$ref"];
    if (typeof ref !== "string") return schema;
    const target = schemas[ref.replace("#/components/schemas/", "")];
    if (!isRecord(target)) throw new Error(`unresolved ${ref}`);
    return resolve(target);
  };
  const check = (raw: Schema, v: unknown, path: string): string[] => {
    const schema = resolve(raw);
    const problems: string[] = [];
    if (v === null && schema["nullable"] === true) return problems;
    const type = schema["type"];
    if (typeof type === "string" && !typeOk(type, v)) return [`${path}: expected ${type}`];
    if (Array.isArray(type) && !type.some((t) => typeof t === "string" && typeOk(t, v))) return [`${path}: expected one of ${type.join(", ")}`];
    if (Array.isArray(schema["enum"]) && !schema["enum"].includes(v)) problems.push(`${path}: not one of ${JSON.stringify(schema["enum"])}`);
    if (typeof v === "string" && typeof schema["maxLength"] === "number" && v.length > schema["maxLength"]) problems.push(`${path}: longer than ${schema["maxLength"]}`);
    if (typeof v === "number") {
      if (typeof schema["minimum"] === "number" && v < schema["minimum"]) problems.push(`${path}: below ${schema["minimum"]}`);
      if (typeof schema["maximum"] === "number" && v > schema["maximum"]) problems.push(`${path}: above ${schema["maximum"]}`);
    }
    if (Array.isArray(v)) {
      if (typeof schema["minItems"] === "number" && v.length < schema["minItems"]) problems.push(`${path}: fewer than ${schema["minItems"]} items`);
      if (typeof schema["maxItems"] === "number" && v.length > schema["maxItems"]) problems.push(`${path}: more than ${schema["maxItems"]} items`);
      const items = schema["items"];
      if (isRecord(items)) v.forEach((item, i) => problems.push(...check(items, item, `${path}[${i}]`)));
    }
    if (isRecord(v)) {
      const properties = isRecord(schema["properties"]) ? schema["properties"] : {};
      const required = Array.isArray(schema["required"]) ? schema["required"] : [];
      for (const key of required) if (typeof key === "string" && !(key in v)) problems.push(`${path}.${key}: required`);
      for (const [key, item] of Object.entries(v)) {
        const property = properties[key];
        if (isRecord(property)) problems.push(...check(property, item, `${path}.${key}`));
        else if (schema["additionalProperties"] === false) problems.push(`${path}.${key}: not allowed`);
      }
    }
    if (Array.isArray(schema["allOf"])) for (const part of schema["allOf"]) if (isRecord(part)) problems.push(...check(part, v, path));
    for (const keyword of ["anyOf", "oneOf"] as const) {
      const options = schema[keyword];
      if (!Array.isArray(options)) continue;
      const passing = options.filter((option) => isRecord(option) && check(option, v, path).length === 0).length;
      if (keyword === "anyOf" ? passing === 0 : passing !== 1) problems.push(`${path}: ${passing} of the ${keyword} alternatives match`);
    }
    return problems;
  };
  const rootSchema = schemas[root];
  if (!isRecord(rootSchema)) throw new Error(`no schema ${root}`);
  errors.push(...check(rootSchema, value, "$"));
  return errors;
}
