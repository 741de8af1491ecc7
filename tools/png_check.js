// tools/png_check.js — is a screenshot blank? node tools/png_check.js A.png [...]
// Decodes each PNG (8-bit RGB or RGBA, non-interlaced: what Chromium's
// --screenshot writes) with node's zlib, undoes the row filters, and counts
// the pixels that are not white and the distinct colours. A page that
// rendered text, tables and pictures has thousands of both; a blank or
// failed page has one colour. Exits 1 (naming the file and the counts) when
// a file has fewer than MIN_INK non-white pixels or MIN_COLOURS colours.
'use strict';
const fs = require('fs');
const zlib = require('zlib');

const MIN_INK = 2000, MIN_COLOURS = 16;

function decode(path) {
  const buf = fs.readFileSync(path);
  if (buf.readUInt32BE(0) !== 0x89504e47) throw new Error(`${path}: not a PNG`);
  let at = 8, width = 0, height = 0, type = 0, depth = 0, interlace = 0;
  const idat = [];
  while (at < buf.length) {
    const len = buf.readUInt32BE(at), kind = buf.toString('latin1', at + 4, at + 8);
    const data = buf.subarray(at + 8, at + 8 + len);
    if (kind === 'IHDR') {
      width = data.readUInt32BE(0); height = data.readUInt32BE(4);
      depth = data[8]; type = data[9]; interlace = data[12];
    } else if (kind === 'IDAT') idat.push(data);
    at += 12 + len;
  }
  const channels = type === 6 ? 4 : type === 2 ? 3 : 0;
  if (depth !== 8 || !channels || interlace)
    throw new Error(`${path}: PNG colour type ${type}, depth ${depth}, interlace ${interlace}: ` +
                    'only 8-bit RGB/RGBA without interlace is read');
  const raw = zlib.inflateSync(Buffer.concat(idat)), stride = width * channels;
  const px = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {     // PNG filters 0..4 (spec section 9)
    const f = raw[y * (stride + 1)], row = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? px[y * stride + x - channels] : 0;
      const b = y > 0 ? px[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? px[(y - 1) * stride + x - channels] : 0;
      const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
      const pred = f === 0 ? 0 : f === 1 ? a : f === 2 ? b : f === 3 ? (a + b) >> 1
                 : pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      px[y * stride + x] = (row[x] + pred) & 255;
    }
  }
  return {width, height, channels, px};
}

let failed = 0;
for (const path of process.argv.slice(2)) {
  let img;
  try { img = decode(path); } catch (e) { console.error(e.message); failed++; continue; }
  const colours = new Set();
  let ink = 0;
  for (let i = 0; i < img.px.length; i += img.channels) {
    const r = img.px[i], g = img.px[i + 1], b = img.px[i + 2];
    colours.add((r << 16) | (g << 8) | b);
    if (r < 250 || g < 250 || b < 250) ink++;
  }
  const ok = ink >= MIN_INK && colours.size >= MIN_COLOURS;
  console.log(`${ok ? 'ok  ' : 'BLANK'} ${path}: ${img.width}x${img.height}, ${ink} non-white ` +
              `pixels, ${colours.size} colours`);
  if (!ok) failed++;
}
process.exit(failed ? 1 : 0);
