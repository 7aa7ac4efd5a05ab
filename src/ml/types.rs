//! Operand data types and descriptors (WebNN `MLOperandDataType`,
//! `MLOperandDescriptor`).

use crate::error::{Error, Result};

/// WebNN `MLOperandDataType`, the subset wgnn runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    Float32,
    Float16,
    Int32,
    Uint8,
}

impl DataType {
    pub fn byte_size(self) -> usize {
        match self {
            DataType::Float32 | DataType::Int32 => 4,
            DataType::Float16 => 2,
            DataType::Uint8 => 1,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DataType::Float32 | DataType::Float16)
    }

    /// WebNN's spelling, used in error messages.
    pub fn name(self) -> &'static str {
        match self {
            DataType::Float32 => "float32",
            DataType::Float16 => "float16",
            DataType::Int32 => "int32",
            DataType::Uint8 => "uint8",
        }
    }
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// WebNN `MLOperandDescriptor`: a data type and a shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OperandDescriptor {
    pub data_type: DataType,
    pub shape: Vec<usize>,
}

/// Refuses shapes whose byte size would not fit in memory, so that a lying
/// model header cannot ask for an absurd allocation.
pub const MAX_ELEMENTS: usize = 1 << 31;

impl OperandDescriptor {
    pub fn new(data_type: DataType, shape: impl Into<Vec<usize>>) -> Self {
        OperandDescriptor {
            data_type,
            shape: shape.into(),
        }
    }

    pub fn f32(shape: impl Into<Vec<usize>>) -> Self {
        Self::new(DataType::Float32, shape)
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    pub fn element_count(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn byte_length(&self) -> usize {
        self.element_count() * self.data_type.byte_size()
    }

    /// Checks the shape is non-empty in every dimension and not absurdly large.
    pub fn validate(&self, what: &str) -> Result<()> {
        if self.shape.contains(&0) {
            return Err(Error::invalid(format!(
                "{what}: shape {:?} has a zero dimension",
                self.shape
            )));
        }
        let mut n: usize = 1;
        for &d in &self.shape {
            n = n
                .checked_mul(d)
                .filter(|&n| n <= MAX_ELEMENTS)
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "{what}: shape {:?} has more than {MAX_ELEMENTS} elements",
                        self.shape
                    ))
                })?;
        }
        Ok(())
    }
}

impl std::fmt::Display for OperandDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:?}", self.data_type, self.shape)
    }
}

/// Row-major strides of a shape, in elements.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}
