//! Opening the files users and model files name without surprises: only
//! regular files are opened (a FIFO would block the open, a device or a
//! socket never ends), the files a model names beside itself stay inside
//! its folder, and images are sized from their header against a pixel budget
//! before anything is decoded. Models, model-procs, labels, backgrounds and
//! the CLIs' inputs all come through here.

mod image_budget;
mod inside;
mod regular;

pub use image_budget::{decode_image, image_size, MAX_IMAGE_PIXELS, MAX_IMAGE_SIDE};
pub use inside::{inside, relative_inside};
pub use regular::{check_regular, open_regular, read_regular};
