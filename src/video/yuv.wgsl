// Y'CbCr -> R'G'B' from the matrix's luma weights, so one function serves
// BT.601 and BT.709 without tables of rounded coefficients.
override yuv_kr: f32;
override yuv_kb: f32;
override yuv_full_range: bool;

// yuv in 0..255, result in 0..255.
fn yuv_to_rgb(yuv: vec3<f32>) -> vec3<f32> {
    var luma: f32;
    var chroma: vec2<f32>;
    if yuv_full_range {
        luma = yuv.x / 255.0;
        chroma = (yuv.yz - 128.0) / 255.0;
    } else {
        // Limited ("TV") range: Y in 16..235, Cb/Cr in 16..240.
        luma = (yuv.x - 16.0) / 219.0;
        chroma = (yuv.yz - 128.0) / 224.0;
    }
    let kg = 1.0 - yuv_kr - yuv_kb;
    let r = luma + 2.0 * (1.0 - yuv_kr) * chroma.y;
    let b = luma + 2.0 * (1.0 - yuv_kb) * chroma.x;
    let g = (luma - yuv_kr * r - yuv_kb * b) / kg;
    return clamp(vec3<f32>(r, g, b), vec3<f32>(0.0), vec3<f32>(1.0)) * 255.0;
}
