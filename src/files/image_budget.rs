//! Images (backgrounds, wgnn-superres inputs) are sized from their header
//! and refused past a pixel budget before anything is decoded: a 400 KB PNG
//! can claim 20000x20000 pixels and take gigabytes to decode (a
//! decompression bomb).

use std::io::{BufReader, Error, ErrorKind};
use std::path::Path;

use super::open_regular;

/// The largest side of an image wgnn decodes: the largest 2D texture most
/// GPUs (and lavapipe) take, and wgnn-superres's output limit.
pub const MAX_IMAGE_SIDE: u32 = 16384;

/// The most pixels of an image wgnn decodes (64 Mpixel, 256 MiB as RGBA).
pub const MAX_IMAGE_PIXELS: u64 = 64 * 1024 * 1024;

fn reader(path: &Path) -> std::io::Result<image::ImageReader<BufReader<std::fs::File>>> {
    let r = image::ImageReader::new(BufReader::new(open_regular(path)?)).with_guessed_format()?;
    if r.format().is_none() {
        return Err(Error::new(
            ErrorKind::InvalidData,
            "not an image format wgnn reads (PNG or JPEG)",
        ));
    }
    Ok(r)
}

fn image_error(e: image::ImageError) -> Error {
    match e {
        image::ImageError::IoError(e) => e,
        e => Error::new(ErrorKind::InvalidData, e.to_string()),
    }
}

/// The image's width and height from its header, refused past the budget.
pub fn image_size(path: &Path) -> std::io::Result<(u32, u32)> {
    let (w, h) = reader(path)?.into_dimensions().map_err(image_error)?;
    if w > MAX_IMAGE_SIDE || h > MAX_IMAGE_SIDE || u64::from(w) * u64::from(h) > MAX_IMAGE_PIXELS {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!(
                "it is {w}x{h} pixels, over the image budget of {MAX_IMAGE_SIDE} pixels on a side \
                 and {} Mpixel in all",
                MAX_IMAGE_PIXELS >> 20
            ),
        ));
    }
    Ok((w, h))
}

/// Decodes the image once its header is within the budget; the decoder is
/// held to the same budget, in case the header lied.
pub fn decode_image(path: &Path) -> std::io::Result<image::DynamicImage> {
    image_size(path)?;
    let mut r = reader(path)?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    // RGBA at 16 bits a channel, the widest PNG wgnn takes.
    limits.max_alloc = Some(MAX_IMAGE_PIXELS * 8);
    r.limits(limits);
    r.decode().map_err(image_error)
}
