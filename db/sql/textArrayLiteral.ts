/**
 * A PostgreSQL text[] literal, bound as one parameter (`?::text[]`): every element double-quoted,
 * with `"` and `\` escaped by a backslash, which is all the array parser needs. Anything else
 * (commas, braces, spaces, newlines, tabs, any unicode) stands for itself inside the quotes.
 *
 * Not `JSON.stringify`: JSON writes a newline as the two characters `\n`, which the array parser
 * reads back as the letter `n`, so the literal would name another key.
 */
export function textArrayLiteral(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replace(/["\\]/g, '\\$&')}"`).join(',')}}`;
}
