/** Posts a file as multipart/form-data the way a browser or curl -F would. */
export async function uploadFile(baseUrl: string, path: string, key: string, file: { field?: string; name: string; content: Buffer | string; type?: string }) {
  const form = new FormData();
  const content = typeof file.content === 'string' ? Buffer.from(file.content) : file.content;
  form.append(file.field ?? 'file', new Blob([content], { type: file.type ?? 'text/csv' }), file.name);
  const res = await fetch(baseUrl + path, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body };
}
