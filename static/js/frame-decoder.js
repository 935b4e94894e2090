// A worker that reads every websocket message off the main thread, in order: JSON text frames
// parsed, binary state frames (layout in app/wire.py) split into their JSON header and typed-array
// views of the same buffer, which goes back to the page transferred, not copied.

const utf8 = new TextDecoder();
const TYPES = { i32: Int32Array, u8: Uint8Array };
const padded = (n) => n + ((4 - (n % 4)) % 4);

function decodeState(buffer) {
  const length = new DataView(buffer).getUint32(0, true);
  const frame = JSON.parse(utf8.decode(new Uint8Array(buffer, 4, length)));
  let offset = 4 + padded(length);
  for (const [name, dtype, count] of frame.arrays) {
    const Type = TYPES[dtype];
    frame[name] = new Type(buffer, offset, count);
    offset += padded(count * Type.BYTES_PER_ELEMENT);
  }
  delete frame.arrays;
  return frame;
}

self.addEventListener("message", ({ data }) => {
  const start = performance.now();
  let frame;
  try {
    frame = typeof data === "string" ? JSON.parse(data) : decodeState(data);
  } catch {
    return; // not a frame of this protocol: nothing to apply
  }
  frame.decodeMs = performance.now() - start;
  self.postMessage(frame, typeof data === "string" ? [] : [data]);
});
