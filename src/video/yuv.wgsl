// Y'CbCr -> R'G'B' from the matrix's luma weights, so one function serves
// BT.601 and BT.709 without tables of rounded coefficients. The matrix and
// range are values (`YuvParams` in frame_read.rs), bound next to the planes:
// every colour spec shares one pipeline per reader.
struct YuvParams {
    // Luma weights of the matrix.
    kr: f32,
    kb: f32,
    // Y' = (y - luma_offset) / luma_range, Cb/Cr = (c - 128) / chroma_range:
    // 16, 219, 224 for limited ("TV") range, 0, 255, 255 for full range.
    luma_offset: f32,
    luma_range: f32,
    chroma_range: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// Binding 3: after the (at most 3) planes.
@group(0) @binding(3) var<uniform> yuv: YuvParams;

// yuv in 0..255, result in 0..255.
fn yuv_to_rgb(c: vec3<f32>) -> vec3<f32> {
    let luma = (c.x - yuv.luma_offset) / yuv.luma_range;
    let chroma = (c.yz - 128.0) / yuv.chroma_range;
    let kr = yuv.kr;
    let kb = yuv.kb;
    let kg = 1.0 - kr - kb;
    let r = luma + 2.0 * (1.0 - kr) * chroma.y;
    let b = luma + 2.0 * (1.0 - kb) * chroma.x;
    let g = (luma - kr * r - kb * b) / kg;
    return clamp(vec3<f32>(r, g, b), vec3<f32>(0.0), vec3<f32>(1.0)) * 255.0;
}
