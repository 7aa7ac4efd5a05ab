// Writes one plane of an uploaded frame from the upload ring's staging
// buffer into its texture: what `copy_buffer_to_texture` does, by a compute
// pass, because on the NVIDIA driver the copy moves a 1080p RGBA frame at
// 75-82 GB/s where this pass runs at over 500 (docs/BENCHMARKS.md,
// `queue-overlap`). `upload_unpack.rs` prepends the texture's storage
// format as FORMAT, the texels a 32-bit word holds as TEXELS (1 for RGBA,
// 2 for RG8, 4 for R8) and `texel(word, i)`, texel i of a word as the
// texture stores it.
//
// `src` is bound to exactly the plane's bytes: `dst`'s height rows, each a
// whole number of words (the staging plan pads rows to 256 bytes), so a
// row's length is arrayLength / height. Invocation (x, y) unpacks word x of
// row y: texels TEXELS * x .. TEXELS * x + TEXELS - 1, those inside the
// texture. Compiled without runtime bounds checks (`Checks::Trusted`): the
// word read, y * row + x, is below height * row because x < the width in
// words <= row and y < height.

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var dst: texture_storage_2d<FORMAT, write>;

@compute @workgroup_size(64, 4)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let size = textureDimensions(dst);
    let x0 = g.x * TEXELS;
    if x0 >= size.x || g.y >= size.y {
        return;
    }
    let row = arrayLength(&src) / size.y;
    let word = src[g.y * row + g.x];
    for (var i = 0u; i < TEXELS; i++) {
        if x0 + i < size.x {
            textureStore(dst, vec2(x0 + i, g.y), texel(word, i));
        }
    }
}
